"""State owned by Python objects: ``Variable`` (and slices, policies), ``Module``, the random
state of traced functions and ``Generator``, and their persistence: ``checkpoint/``
(``tf.train.Checkpoint``) and ``saved_model/`` (``tf.saved_model``).

Nothing is imported here: ``stagecraft.state.module`` imports
``stagecraft.state.checkpoint.tracking`` while ``stagecraft`` itself is being initialized.
"""
