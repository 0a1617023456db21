"""The boto3 S3 client every part of the package uses, made one way."""

import boto3


def make_client(endpoint_url, client_kwargs):
    """A new S3 client on a session of its own (sessions and clients are not
    fork-safe, so each process makes its own); `client_kwargs` go to
    `Session.client("s3", ...)`: credentials, region_name, config."""
    return boto3.session.Session().client("s3", endpoint_url=endpoint_url, **(client_kwargs or {}))
