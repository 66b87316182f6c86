"""The numbered migrations (tables, types, data moves), immutable once landed: SHA256SUMS."""
