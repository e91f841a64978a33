"""Labels move with values: each way a plan can move the attacker's value, refused, and
the honest plans next to them, allowed (the classes the non-interference suite found)."""

from __future__ import annotations

from typing import Any

import pytest

from dcbrain.chain import TFChainInterpreter
from dcbrain.tfplan import TFPolicyDenied
from dcbrain.tools import Tool

EVIL = "IBAN-EVIL-666"


class Bank:
    def __init__(self) -> None:
        self.paid: list[Any] = []

    def read(self) -> str:
        """What the attacker wrote."""
        return EVIL

    def trusted(self) -> str:
        """The company's own record."""
        return "IBAN-TRUSTED"

    def files(self) -> list[dict[str, str]]:
        """Records whose ids are trusted."""
        return [{"id_": "1", "content": "2"}, {"id_": "2", "content": "x"}]

    def pay(self, recipient: Any) -> str:
        """The guarded call."""
        self.paid.append(recipient)
        return "paid"

    def delete(self, file_id: str) -> str:
        """Another guarded call."""
        self.paid.append(file_id)
        return "deleted"


def interpreter(bank: Bank, mode: str, isolation: str = "inprocess",
                flow_check: bool = False) -> TFChainInterpreter:
    return TFChainInterpreter(
        {}, tools=[Tool(bank.read, side_effects=False),
                   Tool(bank.trusted, side_effects=False, trusted_output=True),
                   Tool(bank.files, side_effects=False, trusted_fields=["id_"]),
                   Tool(bank.pay, trusted_args=["recipient"]),
                   Tool(bank.delete, trusted_args=["file_id"])],
        flow_check=flow_check, isolation=isolation, policy_mode=mode,  # type: ignore[arg-type]
    )


def run(plan: str, mode: str, isolation: str = "inprocess") -> list[Any]:
    """The guarded calls that ran; ``TFPolicyDenied`` when one was refused."""
    bank = Bank()
    interpreter(bank, mode, isolation).evaluate(plan)
    return bank.paid


ATTACKS = {
    "augmented subscript store": 'xs = [""]\nxs[0] += read()\npay(recipient=xs[0])',
    "subscript store": 'xs = ["a"]\nxs[0] = read()\npay(recipient=xs[0])',
    "dict key, list(d)": 'd = {}\nd[read()] = 1\npay(recipient=list(d)[0])',
    "dict key, keys()": 'd = {}\nd[read()] = 1\npay(recipient=list(d.keys())[0])',
    "dict key, for": 'd = {}\nd[read()] = 1\nfor k in d:\n    pay(recipient=k)',
    "set.add": 's = set()\ns.add(read())\npay(recipient=sorted(s)[0])',
    "reverse": 'xs = ["a", read()]\nxs.reverse()\npay(recipient=xs[0])',
    "sort": 'xs = ["z", read()]\nxs.sort()\npay(recipient=xs[0])',
    "pop": 'xs = ["a", read()]\nxs.pop(0)\npay(recipient=xs[0])',
    "remove": 'xs = ["a", read()]\nxs.remove("a")\npay(recipient=xs[0])',
    "insert": 'xs = ["a"]\nxs.insert(0, read())\npay(recipient=xs[0])',
    "clear": 'xs = ["a"]\nys = xs\nxs.clear()\nxs.append(read())\npay(recipient=ys[0])',
    "del": 'xs = ["a", read()]\ndel xs[0]\npay(recipient=xs[0])',
    "list swap": 'xs = ["a", read()]\nxs[0], xs[1] = xs[1], xs[0]\npay(recipient=xs[0])',
    "dict swap": ('d = {"a": "a", "b": read()}\nd["a"], d["b"] = d["b"], d["a"]\n'
                  'pay(recipient=d["a"])'),
    "map with a lambda that mutates": (
        'fs = files()\nlist(map(lambda f: f.update({"id_": f["content"]}), fs))\n'
        'delete(file_id=fs[0]["id_"])'),
    "map with a plan function that mutates": (
        'def rekey(f):\n    f["id_"] = f["content"]\nfs = files()\nlist(map(rekey, fs))\n'
        'delete(file_id=fs[0]["id_"])'),
    "an alias a plan function returns": (
        'xs = ["a"]\ndef get():\n    return xs\nys = get()\nys[0] = read()\n'
        'pay(recipient=xs[0])'),
    "a store into a plan function's result": (
        'xs = ["a"]\ndef get():\n    return xs\nget().insert(0, read())\n'
        'pay(recipient=xs[0])'),
    "a lambda that mutates, called later": (
        'xs = ["a"]\nput = lambda v: xs.insert(0, v)\nev = read()\nput(ev)\n'
        'pay(recipient=xs[0])'),
    "a generator that mutates, run later": (
        'xs = ["a"]\ng = (xs.insert(0, ev) for _ in [1])\nev = read()\nlist(g)\n'
        'pay(recipient=xs[0])'),
    "sorted with a key that mutates": (
        'xs = ["a"]\nrows = [xs]\nsorted(rows, key=lambda r: r.insert(0, read()) or 0)\n'
        'pay(recipient=xs[0])'),
}
#: Implicit flows: refused in strict mode (enforce leaves them alone by design).
IMPLICIT = {
    "the branch not taken": ('x = "IBAN-A"\nif read() == "IBAN-EVIL-666":\n'
                             '    x = "IBAN-B"\npay(recipient=x)'),
    "the branch taken": 'x = "IBAN-A"\nif read() != "x":\n    x = "IBAN-B"\npay(recipient=x)',
    "an early return": ('def pick():\n    if read() == "IBAN-EVIL-666":\n'
                        '        return "IBAN-A"\n    return "IBAN-B"\npay(recipient=pick())'),
    "a loop that may not run": ('x = "IBAN-A"\nfor c in read().split("EVIL"):\n'
                                '    x = "IBAN-B"\npay(recipient=x)'),
    "a plan function's change in place not made": (
        'xs = ["IBAN-A"]\ndef put():\n    xs.insert(0, "IBAN-B")\nif read() == "x":\n'
        '    put()\npay(recipient=xs[0])'),
    "a plan function's global not set": (
        'def setx():\n    global x\n    x = "IBAN-B"\ndef outer():\n    setx()\n'
        'x = "IBAN-A"\nif read() == "x":\n    outer()\npay(recipient=x)'),
    "a change in place not made": ('xs = ["IBAN-A"]\nif read() == "x":\n'
                                   '    xs.insert(0, "IBAN-B")\npay(recipient=xs[0])'),
}
HONEST = {
    "the trusted branch of parallel": 'a, b = parallel(read(), trusted())\npay(recipient=b)',
    "a dict's trusted keys": 'd = {"IBAN-A": read()}\nfor k in d:\n    pay(recipient=k)',
    "a display's trusted element": 'xs = [trusted(), read()]\npay(recipient=xs[0])',
    "a largest record's id": ('fs = files()\nbig = max(fs, key=lambda f: f["content"])\n'
                              'delete(file_id=big["id_"])'),
}


@pytest.mark.parametrize("mode", ["enforce", "strict"])
@pytest.mark.parametrize("plan", ATTACKS.values(), ids=ATTACKS.keys())
def test_an_explicit_flow_is_refused(plan: str, mode: str) -> None:
    with pytest.raises(TFPolicyDenied):
        run(plan, mode)


@pytest.mark.parametrize("plan", IMPLICIT.values(), ids=IMPLICIT.keys())
def test_strict_mode_refuses_an_implicit_flow(plan: str) -> None:
    with pytest.raises(TFPolicyDenied):
        run(plan, "strict")


@pytest.mark.parametrize("plan", IMPLICIT.values(), ids=IMPLICIT.keys())
def test_the_static_check_in_strict_mode_refuses_an_implicit_flow_before_any_call(
        plan: str) -> None:
    """The check follows strict mode's conditions as the run does (the branch not taken
    included); enforce mode's check, like its run, leaves them alone."""
    found = interpreter(Bank(), "strict", flow_check=True).check(plan)
    assert len(found) == 1 and "pay(recipient=...) gets data from read()" in str(found[0]), \
        found
    assert interpreter(Bank(), "enforce", flow_check=True).check(plan) == []


@pytest.mark.parametrize("mode", ["enforce", "strict"])
@pytest.mark.parametrize("plan", HONEST.values(), ids=HONEST.keys())
def test_an_honest_plan_runs(plan: str, mode: str) -> None:
    assert run(plan, mode)


@pytest.mark.parametrize("name", ["augmented subscript store", "dict key, list(d)",
                                  "map with a lambda that mutates"])
def test_the_sandbox_refuses_the_same(name: str) -> None:
    with pytest.raises(TFPolicyDenied):
        run(ATTACKS[name], "enforce", isolation="process")


def test_with_policies_off_every_attack_would_pass_the_attackers_value() -> None:
    for plan in ATTACKS.values():
        assert run(plan, "off")[0] in (EVIL, "2")  # "2": the content moved into an id
    for plan in IMPLICIT.values():
        assert run(plan, "off")
