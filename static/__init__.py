"""gradebox static layer."""
