import json


def parse(text):
    try:
        return json.loads(text)
    except:
        pass
    return None
