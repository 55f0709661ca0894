"""Small functions of two ints with break/continue/return in awkward places; the tests convert
each one and compare it with the original on many inputs."""
# flake8: noqa


def while_break(x, y):
    i = 0
    while i < 10:
        if i * x > y:
            break
        i += 1
    return i


def while_true_break(x, y):
    n = 0
    while True:
        n += 1
        if n * n > abs(x) + abs(y):
            break
    return n


def for_break_else(x, y):
    s = 0
    for i in range(abs(x) % 6):
        s += i
        if s > y:
            break
    else:
        s = -s
    return s


def while_else_no_break(x, y):
    i = 0
    while i < abs(x) % 5:
        i += 1
    else:
        i = i * 10
    return i + y


def for_continue(x, y):
    s = 0
    for i in range(abs(x) % 9):
        if i % 2 == 0:
            continue
        if i == y:
            continue
        s += i
    return s


def while_continue(x, y):
    i, s = 0, 0
    while i < abs(x) % 8:
        i += 1
        if (i + y) % 3 == 0:
            continue
        s = s * 2 + i
    return s


def nested_loops(x, y):
    out = []
    for i in range(abs(x) % 5):
        j = 0
        while j < 4:
            j += 1
            if (i + j) % 3 == 0:
                continue
            if i * j > y:
                break
            out.append((i, j))
        else:
            out.append(-1)
        if len(out) > 6:
            break
    return out


def else_continue(x, y):
    hits = 0
    for i in range(abs(x) % 5):
        for j in range(abs(y) % 4):
            if j == i:
                break
        else:
            continue
        hits += 1
    return hits


def break_in_if_else(x, y):
    log = []
    for i in range(6):
        if i < x:
            log.append(i)
        else:
            if i > y:
                break
            log.append(-i)
            continue
        log.append(100)
    return log


def early_returns(x, y):
    if x > y:
        return "gt"
    elif x == y:
        return "eq"
    if x < 0:
        return "neg"
    return "lt"


def falls_off(x, y):
    if x > y:
        return x - y


def bare_return(x, y):
    if x == 0:
        return
    return y // x


def return_in_loop(x, y):
    for i in range(abs(x) % 7):
        for j in range(abs(y) % 5):
            if i * j == 6:
                return (i, j)
    return None


def return_in_while(x, y):
    n = abs(x) % 20
    steps = 0
    while n != 1 and n != 0:
        if steps > abs(y):
            return -steps
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def return_break_continue(x, y):
    total = 0
    for i in range(abs(x) % 8):
        if i == 2:
            continue
        k = 0
        while True:
            k += 1
            if k > i:
                break
            if k * i == y:
                return ("found", i, k, total)
            total += k
    return total


def return_in_loop_else(x, y):
    for i in range(abs(x) % 4):
        if i == y:
            break
    else:
        return "no break"
    return "broke"


def try_finally(x, y):
    log = []
    try:
        if x > 0:
            return (x, log)
        log.append(1)
    finally:
        log.append(2)
    log.append(3)
    return log


def try_except(x, y):
    for i in range(3):
        try:
            if y == i:
                return 10 // (x - i)
        except ZeroDivisionError:
            continue
        if x == i + 5:
            break
    return "end"


def raises_after_return_check(x, y):
    if x > 3:
        return 1
    return 1 // (y - y)


def nested_def(x, y):
    def sign(v):
        if v > 0:
            return 1
        if v < 0:
            return -1
        return 0

    total = 0
    for v in (x, y, x - y):
        if sign(v) == 0:
            continue
        total += sign(v)
    return total


def iterator_break(x, y):
    it = iter(range(abs(x) % 9))
    for v in it:
        if v == abs(y) % 5:
            break
    return list(it)


def while_test_side_effects(x, y):
    it = iter(range(abs(x) % 8))
    seen = []
    while next(it, None) is not None:
        seen.append(1)
        if len(seen) > abs(y) % 4:
            break
    return seen, list(it)


def with_docstring(x, y):
    """A docstring stays first."""
    for i in range(3):
        if i == x:
            return i
    return y


CASES = [while_break, while_true_break, for_break_else, while_else_no_break, for_continue,
         while_continue, nested_loops, else_continue, break_in_if_else, early_returns,
         falls_off, bare_return, return_in_loop, return_in_while, return_break_continue,
         return_in_loop_else, try_finally, try_except, raises_after_return_check, nested_def,
         iterator_break, while_test_side_effects, with_docstring]
