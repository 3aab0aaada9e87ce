import sqlite3


def find_user(conn: sqlite3.Connection, username: str):
    cur = conn.cursor()
    cur.execute("SELECT id, email FROM users WHERE name = ?", (username,))
    return cur.fetchone()


def count(conn, table_filter):
    sql = "SELECT COUNT(*) FROM users WHERE active = 1"
    return conn.execute(sql).fetchone()[0]
