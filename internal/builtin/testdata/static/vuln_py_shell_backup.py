import subprocess


def backup(directory):
    cmd = "tar czf /tmp/backup.tgz " + directory
    return subprocess.check_output(cmd, shell=True)
