"""``tf.saved_model``: a trained object's traced functions (as serialized IR) and variable
values, written to a directory and loaded back, in any process, without the Python source
that built it.

    import stagecraft as tf
    tf.saved_model.save(model, "/tmp/model")        # every traced concrete function + values
    loaded = tf.saved_model.load("/tmp/model")      # a generic object; no class needed
    loaded(x); loaded.kernel.assign(...)            # runs on the default backend

Layout of a SavedModel directory (format ``stagecraft.saved_model`` version 1):
``saved_model.json`` (object graph, concrete functions, signatures), ``saved_model.npz``
(their arrays), ``variables/variables.index`` + ``variables/variables.data-00000-of-00001`` (a
checkpoint), ``assets/`` and ``fingerprint.json`` (SHA-256 of every file).
"""
from stagecraft.state.saved_model.format import CorruptSavedModelError
from stagecraft.state.saved_model.functions import RestoredFunction, SignatureFunction
from stagecraft.state.saved_model.loading import load
from stagecraft.state.saved_model.objects import UserObject
from stagecraft.state.saved_model.saving import save

__all__ = ["CorruptSavedModelError", "RestoredFunction", "SignatureFunction", "UserObject",
           "load", "save"]
