import yaml


def read_config(path):
    with open(path) as fh:
        return yaml.load(fh)
