"""``stagecraft.distribute``: remote devices (the paper's distributed execution model, on Ray).

``connect(num_workers=N)`` starts N workers, the tasks ``/job:worker/replica:0/task:i``, and
registers their devices; eager ops, ``tf.function`` calls and variables under
``tf.device("/job:worker/task:1")`` then run on that worker. Remote tensors are handles (the
value stays on the worker; ``.numpy()`` fetches it); copies between this process and workers
are implicit and differentiable. A function called on a worker is sent once as its
serialized graph, which the worker compiles with its own backend and caches by content hash;
calls send only tensors and handles. ``disconnect()`` ends the workers.

The placement and handle logic (``cluster``) is independent of Ray: ``transport`` defines
what it needs from a transport, and runs an in-process fake; ``ray_transport`` is the Ray one
(imported only when a program connects with it). ``import stagecraft`` never imports Ray.
"""
from stagecraft.distribute.cluster_spec import ClusterSpec
from stagecraft.distribute.connect import (connect, connected, disconnect,
                                           experimental_connect_to_cluster)
from stagecraft.distribute.remote_variable import RemoteVariable

__all__ = ["ClusterSpec", "RemoteVariable", "connect", "connected", "disconnect",
           "experimental_connect_to_cluster"]
