"""Networks and targets: exact target/frozen networks, target files, models from other libraries."""
