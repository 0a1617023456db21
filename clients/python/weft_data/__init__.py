"""Training data and checkpoints over S3 from a Weft spoke: S3Dataset and
WeftSampler (whose order the spoke fetches ahead), save_checkpoint,
CheckpointSaver (the same in the background) and load_checkpoint. Makes
its requests with the standard library (presigned URLs, or anonymous for a
public-read export), with boto3's credential chain where boto3 imports, or
with boto3 (transport="boto3", or client_kwargs only boto3 takes); uses
torch when it imports."""

from ._http import S3Error
from .checkpoint import CheckpointSaver, load_checkpoint, save_checkpoint
from .dataset import S3Dataset
from .sampler import WeftSampler

__all__ = ["S3Dataset", "WeftSampler", "save_checkpoint", "CheckpointSaver", "load_checkpoint", "S3Error"]
