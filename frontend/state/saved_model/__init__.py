"""SavedModels: the format (``format``, ``schema``), saving (``saving``, ``objects``), loading
(``loading``) and the restored functions (``functions``). Users reach them as
``stagecraft.saved_model``.

Nothing is imported here, so that the modules of this package load in any order.
"""
