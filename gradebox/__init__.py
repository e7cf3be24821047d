"""gradebox: grade AI-generated Python code."""
