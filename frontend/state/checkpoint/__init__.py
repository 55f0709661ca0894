"""Checkpoints: the object graph (``graph``), the on-disk format (``format``), matching and
deferred restoration (``restore``, ``tracking``, ``slots``), ``Checkpoint`` and
``CheckpointManager``. Users reach them as ``stagecraft.train``.

Nothing is imported here: ``stagecraft.state.module`` imports
``stagecraft.state.checkpoint.tracking`` while ``stagecraft`` itself is being initialized.
"""
