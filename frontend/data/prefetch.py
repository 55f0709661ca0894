"""``Dataset.prefetch``: a background thread produces elements ahead into a bounded queue, so
the pipeline's work (NumPy and compiled code, which release the GIL) overlaps the consumer's."""
from __future__ import annotations

import queue
import threading
from typing import Any, Iterator

from stagecraft.data.dataset import AUTOTUNE, Context, Dataset, register
__all__ = ["Prefetch"]

_AUTOTUNE_BUFFER = 2  # what AUTOTUNE picks: enough to hide one slow element
_END = object()


class _Failure:
    def __init__(self, error: BaseException):
        self.error = error


@register
class Prefetch(Dataset):
    def __init__(self, source: Dataset, buffer_size: Any):
        size = int(buffer_size)
        if size < 0 and size != AUTOTUNE:
            raise ValueError(f"Dataset.prefetch: buffer_size must be >= 0 or "
                             f"tf.data.AUTOTUNE; got {buffer_size}.")
        self._size = _AUTOTUNE_BUFFER if size == AUTOTUNE else size
        super().__init__(source.element_spec, (source,))

    def _cardinality(self) -> int:
        return self._inputs[0]._cardinality()

    def _elements(self, ctx: Context) -> Iterator[Any]:
        upstream = self._inputs[0]._elements(ctx)
        if self._size == 0:
            yield from upstream
            return
        q: queue.Queue = queue.Queue(self._size)
        stop = threading.Event()

        def produce() -> None:
            try:
                for element in upstream:
                    if not _put(q, element, stop):
                        return
                _put(q, _END, stop)
            except BaseException as e:  # noqa: BLE001 - re-raised in the consumer
                _put(q, _Failure(e), stop)

        thread = threading.Thread(target=produce, name="stagecraft-data-prefetch", daemon=True)
        thread.start()
        try:
            while True:
                item = q.get()
                if item is _END:
                    return
                if isinstance(item, _Failure):
                    raise item.error
                yield item
        finally:  # the consumer stopped (or finished): let the producer end
            stop.set()


def _put(q: queue.Queue, item: Any, stop: threading.Event) -> bool:
    """Puts ``item`` unless the consumer has gone; whether it was put."""
    while not stop.is_set():
        try:
            q.put(item, timeout=0.1)
            return True
        except queue.Full:
            continue
    return False
