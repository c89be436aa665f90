"""Choosing a tf.distribute strategy by name."""

from absl import logging
import tensorflow as tf

from albert_common.errors import UserInputError
from albert_common.run_constants import STRATEGIES


def create_strategy(name: str, tpu: str = "") -> tf.distribute.Strategy:
  """The strategy for `--strategy`.

  Args:
    name: "default" (no distribution: a laptop), "one_device" (the first GPU,
      else the CPU), "mirrored" (all local GPUs, or the CPU if none),
      "multi_worker" (MultiWorkerMirroredStrategy; the cluster comes from
      TF_CONFIG), or "tpu" (TPUStrategy).
    tpu: for "tpu", the address or name given to TPUClusterResolver ("" means
      the TPU in the environment).
  """
  if name == "default":
    strategy = tf.distribute.get_strategy()
  elif name == "one_device":
    gpus = tf.config.list_logical_devices("GPU")
    strategy = tf.distribute.OneDeviceStrategy(gpus[0].name if gpus
                                               else "/cpu:0")
  elif name == "mirrored":
    # All GPUs; without GPUs, every logical CPU device (MirroredStrategy's
    # own default would use a single CPU replica).
    devices = (tf.config.list_logical_devices("GPU")
               or tf.config.list_logical_devices("CPU"))
    strategy = tf.distribute.MirroredStrategy([d.name for d in devices])
  elif name == "multi_worker":
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
  elif name == "tpu":
    strategy = _tpu_strategy(tpu)
  else:
    raise UserInputError(f"--strategy must be one of {STRATEGIES}, "
                         f"got {name!r}")
  logging.info("strategy %s (%s) with %d replica(s)", name,
               type(strategy).__name__,
               strategy.num_replicas_in_sync)
  return strategy


def _tpu_strategy(tpu: str) -> tf.distribute.TPUStrategy:
  """TPUStrategy on the TPU `tpu` names; a UserInputError naming --tpu if
  there is none to reach."""
  try:
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu)
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.TPUStrategy(resolver)
  except (ValueError, OSError, tf.errors.OpError) as e:
    reason = str(getattr(e, "message", e)).strip().split("\n")[0]
    raise UserInputError(
        f"--strategy=tpu found no TPU at --tpu={tpu!r} ({reason[:200]}); "
        "give --tpu=<Cloud TPU name or grpc://host:8470>, or --tpu=local on "
        "a TPU VM") from None


def is_chief(resolver=None) -> bool:
  """Whether this process writes checkpoints, summaries and results.

  Args:
    resolver: a cluster resolver (a MultiWorkerMirroredStrategy's
      `cluster_resolver`); None reads TF_CONFIG. Without a cluster, the one
      process is the chief; else the "chief" task if there is one, else
      worker 0.
  """
  if resolver is None:
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
  cluster = resolver.cluster_spec().as_dict()
  if not cluster:
    return True
  if "chief" in cluster:
    return resolver.task_type == "chief"
  return resolver.task_type in (None, "worker") and resolver.task_id == 0
