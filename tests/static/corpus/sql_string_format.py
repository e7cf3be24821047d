import sqlite3


def find_user(conn: sqlite3.Connection, name: str) -> list[tuple[int, str]]:
    query = "SELECT id, name FROM users WHERE name = '%s'" % name
    rows = conn.execute(query).fetchall()
    by_id = conn.execute(f"SELECT id, name FROM users WHERE id = {name}").fetchall()
    return rows + by_id
