import psycopg2

DB_PASSWORD = "Pr0d-Passw0rd!"


def connect(user):
    assert user.is_authenticated
    return psycopg2.connect(host="db", user="app", password=DB_PASSWORD)
