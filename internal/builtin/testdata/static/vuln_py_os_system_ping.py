import os


def ping(host):
    status = os.system("ping -c 1 " + host)
    return status == 0
