import boto3

# FIXME: move this to the secrets manager
ACCESS_KEY_ID = "AKIAQYLPMN5HFIQR7XJA"


def client():
    return boto3.client("s3", aws_access_key_id=ACCESS_KEY_ID)
