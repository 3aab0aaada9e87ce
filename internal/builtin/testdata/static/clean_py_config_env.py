import os

import yaml

DB_PASSWORD = os.environ.get("DB_PASSWORD", "")
PASSWORD_MIN_LENGTH = 12
TOKEN_URL = "https://auth.example.com/oauth/token"


def load(path):
    with open(path) as fh:
        return yaml.safe_load(fh)
