"""Hidden tests in isolation: cases, the comparator and the sandbox runner."""
