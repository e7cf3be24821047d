"""gradebox judge layer."""
