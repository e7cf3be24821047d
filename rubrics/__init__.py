"""gradebox rubrics layer."""
