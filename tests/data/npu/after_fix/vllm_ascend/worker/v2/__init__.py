"""syncgate fixture package (not upstream code)."""
