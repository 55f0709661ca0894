"""Items and attributes (``x['b']``, ``L[0]``, ``obj.attr``) assigned in tensor control flow:
containers outside the function (module-level dicts and lists) and composite symbols carried
as cond/loop state with TensorFlow's legality rules and messages (issue 14, item 4)."""
from __future__ import annotations

import pytest

import stagecraft as tf

BACKENDS = ["reference", pytest.param("numba", id="numba")]

CACHE: dict = {}
LOG: list = []
SLOTS: list = [0.0]


def _first_line(e: pytest.ExceptionInfo) -> str:
    return str(e.value).splitlines()[0]


# ------------------------------------------------------- module-level containers (item 1)

def writes_module_dict_in_tensor_if(x):
    if x > 0:
        CACHE["k"] = x * 2
    else:
        CACHE["k"] = x * 3
    return x + 1


def appends_to_module_list_in_tensor_loop(n):
    s = tf.constant(0)
    for i in tf.range(n):
        LOG.append("iteration traced")
        s += i
    return s


def sets_module_list_item_in_tensor_if(x):
    if x > 0:
        SLOTS[0] = x
        LOG.append("branch traced")
    return x


def test_module_dict_item_in_a_tensor_if_is_a_python_side_effect():
    CACHE.clear()
    out = tf.function(writes_module_dict_in_tensor_if, backend="reference")(tf.constant(2.0))
    assert float(out) == 3.0
    assert "k" in CACHE  # written while tracing, as TensorFlow does


@pytest.mark.parametrize("backend", BACKENDS)
def test_module_list_append_in_a_tensor_loop_runs_at_trace_time(backend):
    LOG.clear()
    f = tf.function(appends_to_module_list_in_tensor_loop, backend=backend)
    assert int(f(tf.constant(4))) == 6
    assert LOG == ["iteration traced"]  # the body is traced once
    assert int(f(tf.constant(5))) == 10
    assert LOG == ["iteration traced"]  # and not run again by later calls


def test_module_list_item_existing_before_the_if_is_carried():
    LOG.clear()
    SLOTS[:] = [0.0]
    f = tf.function(sets_module_list_item_in_tensor_if, backend="reference")
    assert float(f(tf.constant(-1.0))) == -1.0
    assert LOG == ["branch traced"]
    assert len(SLOTS) == 1


def test_module_dict_item_defined_in_one_branch_only_names_the_item():
    CACHE.clear()

    def one_branch(x):
        if x > 0:
            CACHE["new"] = x
        return x
    with pytest.raises(ValueError) as e:
        tf.function(one_branch, backend="reference")(tf.constant(1.0))
    assert _first_line(e).startswith("'CACHE['new']' must also be initialized in the else "
                                     "branch")
    assert "new" not in CACHE  # the traced branch's write was taken back


def test_module_containers_in_python_control_flow_are_plain_python():
    CACHE.clear()
    assert int(tf.function(writes_module_dict_in_tensor_if)(2)) == 3
    assert CACHE == {"k": 4}


# ------------------------------------------------------------- dict items as state (item 4)

def dict_item_defined_before(x):
    d = {"a": x, "b": tf.zeros_like(x)}
    if x > 0:
        d["b"] = x * 3
    return d["a"] + d["b"]


def dict_item_defined_in_both_branches(x):
    d = {}
    if x > 0:
        d["b"] = x * 3
    else:
        d["b"] = -x
    return d["b"]


def dict_item_defined_in_one_branch(x):
    d = {}
    if x > 0:
        d["b"] = x * 3
    return d


def nested_dict_item_in_one_branch(x):
    d = {"a": {}}
    if x > 0:
        d["a"]["b"] = x
    else:
        d["c"] = x
    return d


def dict_item_as_loop_state(n):
    y = {"b": n, "count": tf.constant(0)}
    while y["b"] > 0:
        y["b"] = y["b"] - 2
        y["count"] = y["count"] + 1
    return y["b"], y["count"]


def loop_creates_dict_item(n):
    y = {}
    for i in tf.range(n):
        y["a"] = i * 2
    return y["a"]


def missing_key_is_a_key_error(x):
    d = {"a": x}
    if x > 0:
        d["b"] += 1
    return d


@pytest.mark.parametrize("backend", BACKENDS)
def test_dict_item_defined_before_the_if(backend):
    f = tf.function(dict_item_defined_before, backend=backend)
    assert float(f(tf.constant(2.0))) == 8.0
    assert float(f(tf.constant(-2.0))) == -2.0


def test_dict_item_defined_in_both_branches():
    f = tf.function(dict_item_defined_in_both_branches, backend="reference")
    assert float(f(tf.constant(2.0))) == 6.0
    assert float(f(tf.constant(-2.0))) == 2.0


def test_dict_item_defined_in_one_branch_is_an_error_naming_the_item():
    assert dict_item_defined_in_one_branch(2) == {"b": 6}  # legal in Python
    with pytest.raises(ValueError) as e:
        tf.function(dict_item_defined_in_one_branch, backend="reference")(tf.constant(2.0))
    assert _first_line(e).startswith("'d['b']' must also be initialized in the else branch")


def test_nested_item_defined_in_one_branch_names_the_nested_item():
    with pytest.raises(ValueError) as e:
        tf.function(nested_dict_item_in_one_branch, backend="reference")(tf.constant(2.0))
    assert _first_line(e).startswith("'d['a']['b']' must also be initialized in the else "
                                     "branch") or \
        _first_line(e).startswith("'d['c']' must also be initialized in the if branch")


@pytest.mark.parametrize("backend", BACKENDS)
def test_dict_items_as_while_state(backend):
    b, count = tf.function(dict_item_as_loop_state, backend=backend)(tf.constant(7))
    assert (int(b), int(count)) == (-1, 4)


def test_loop_creating_an_item_must_iterate_at_least_once():
    f = tf.function(loop_creates_dict_item, backend="reference")
    assert int(f(tf.constant(3))) == 4
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        f(tf.constant(0))
    assert "must iterate at least once to initialize 'y['a']'" in _first_line(e)


def test_missing_key_is_a_key_error_in_both_modes():
    with pytest.raises(KeyError):
        missing_key_is_a_key_error(1)
    with pytest.raises(KeyError):
        tf.function(missing_key_is_a_key_error, backend="reference")(tf.constant(1))


# --------------------------------------------------------------- attributes as state (item 4)

class Counter:
    def __init__(self):
        self.count = tf.constant(0)
        self.total = tf.constant(0.0)

    def run(self, n):
        for i in tf.range(n):
            self.count = self.count + 1
            self.total = self.total + tf.cast(i, tf.float32)
        return self.count, self.total


def attribute_in_branches(obj, x):
    if x > 0:
        obj.value = x * 2
    else:
        obj.value = -x
    return obj.value


def attribute_in_one_branch(obj, x):
    if x > 0:
        obj.fresh = x
    return x


class Box:
    pass


@pytest.mark.parametrize("backend", BACKENDS)
def test_attributes_as_loop_state(backend):
    counter = Counter()
    count, total = tf.function(counter.run, backend=backend)(tf.constant(4))
    assert (int(count), float(total)) == (4, 6.0)


def test_attribute_defined_in_both_branches():
    f = tf.function(attribute_in_branches, backend="reference")
    box = Box()
    assert float(f(box, tf.constant(3.0))) == 6.0
    assert float(f(box, tf.constant(-3.0))) == 3.0


def test_attribute_defined_in_one_branch_names_the_attribute():
    box = Box()
    with pytest.raises(ValueError) as e:
        tf.function(attribute_in_one_branch, backend="reference")(box, tf.constant(3.0))
    assert _first_line(e).startswith("'obj.fresh' must also be initialized in the else branch")
    assert not hasattr(box, "fresh")
