import requests

API = "https://internal.example.com/api"


def fetch(path):
    resp = requests.get(API + path, verify=False, timeout=10)
    resp.raise_for_status()
    return resp.json()
