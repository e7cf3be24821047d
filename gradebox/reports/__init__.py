"""Reports written from graded rows: JUnit XML and a self-contained HTML page."""
