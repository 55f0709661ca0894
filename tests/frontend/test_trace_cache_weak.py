"""Objects in trace keys are held weakly everywhere (issue 15, item 4): a ConcreteFunction does
not keep its key objects alive, a trace whose key object died is dropped, and the lookup of a
call is a dict hit, so fresh argument objects leave memory and per-call work flat. No timing
assertions: work is counted in scanned entries, memory measured with tracemalloc."""
import gc
import tracemalloc
import weakref

import stagecraft as tf

from stagecraft.staging import function as function_mod  # the module; tf.function is the decorator


class Config:
    def __init__(self, scale: float):
        self.scale = scale


def _scaled():
    @tf.function
    def f(x, cfg):
        return x * cfg.scale
    return f


def test_concrete_function_does_not_keep_key_objects_alive():
    f = _scaled()
    cfg = Config(2.0)
    concrete = f.get_concrete_function(tf.constant([1.0]), cfg)
    assert concrete.structured_input_signature[0][1] is cfg  # while alive, as traced
    ref = weakref.ref(cfg)
    del cfg
    gc.collect()
    assert ref() is None, "the trace kept its key object alive"
    assert "no longer alive" in repr(concrete.structured_input_signature[0][1])


def test_trace_is_dropped_when_its_key_object_dies():
    f = _scaled()
    cfg = Config(3.0)
    assert f(tf.constant([1.0]), cfg).numpy().tolist() == [3.0]
    assert len(f._by_key) == 1
    del cfg
    gc.collect()
    assert len(f._by_key) == 0  # dropped at once from the exact index
    keep = Config(4.0)
    assert f(tf.constant([1.0]), keep).numpy().tolist() == [4.0]
    assert len(f._entries) == 1  # and from the entry list on the next lookup
    assert f.experimental_get_tracing_count() == 2  # counts traces made, dropped or not


def test_fresh_objects_leave_traces_memory_and_work_flat(monkeypatch):
    f = _scaled()
    x = tf.constant([1.0, 2.0])
    scanned = [0]
    real = function_mod.is_subtype

    def counting(key, general):
        scanned[0] += 1
        return real(key, general)

    monkeypatch.setattr(function_mod, "is_subtype", counting)

    def batch(n: int) -> int:
        before = scanned[0]
        for i in range(n):
            assert f(x, Config(float(i))).numpy()[1] == 2.0 * i
        return scanned[0] - before

    batch(200)  # warm up: imports, caches, the retracing warning
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        first = batch(1000)
        gc.collect()
        middle = tracemalloc.get_traced_memory()[0]
        second = batch(1000)
        gc.collect()
        end = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(f._entries) <= 2 and len(f._by_key) <= 2, "dead traces were kept"
    assert first == second == 0, f"lookups scanned entries: {first}, then {second}"
    # Flat: the second thousand calls do not grow memory more than the first (a leak of one
    # trace per call is ~10 kB each, 10 MB per thousand).
    assert end - middle < 1_000_000, (start, middle, end)
    assert end - start < 2_000_000, (start, middle, end)


def test_relaxed_traces_are_found_by_scanning_only_general_entries(monkeypatch):
    @tf.function(reduce_retracing=True)
    def g(x, cfg):
        return x * cfg.scale

    cfg = Config(2.0)
    for n in (1, 2, 3, 4):
        g(tf.ones([n]), cfg)
    assert g.experimental_get_tracing_count() == 2  # (1,), then relaxed to (None,)
    scanned = [0]
    real = function_mod.is_subtype
    monkeypatch.setattr(function_mod, "is_subtype",
                        lambda k, gen: scanned.__setitem__(0, scanned[0] + 1) or real(k, gen))
    assert g(tf.ones([7]), cfg).numpy().tolist() == [2.0] * 7
    assert g.experimental_get_tracing_count() == 2
    assert scanned[0] == 1  # only the relaxed entry, not the exact (1,) one


def test_retracing_warning_still_names_the_argument_whose_object_died(caplog):
    @tf.function
    def h(x, settings):
        return x * settings.scale

    with caplog.at_level("WARNING", logger="stagecraft"):
        for i in range(6):
            h(tf.constant(1.0), Config(float(i)))  # each Config dies after its call
    assert "The argument that changed in the latest call: 'settings'" in caplog.text
