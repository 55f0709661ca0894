"""Devices: detection and listing (``device``), device names (``device_spec``). Where eager ops
run on them is ``stagecraft.eager.placement``.

Nothing is imported here: ``stagecraft.devices.device`` is the module, ``stagecraft.device``
the scope.
"""
