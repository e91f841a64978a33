"""What a brain's process loads: a run of plain tools and dcbrain's own chains imports no
library that only some runs need (JSON Schema validation for schemas given as JSON, the
repair of malformed JSON, SQLite)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

ONLY_WHEN_NEEDED = ("jsonschema", "re2", "json_repair", "sqlite3")

PROBE = textwrap.dedent("""
    import sys
    from dcbrain import ScriptedLLM
    from dcbrain.brain import DCBrain

    def add(a: int, b: int) -> int:
        '''Add two integers.'''
        return a + b

    brain = DCBrain(default_plan_llm=ScriptedLLM(["```tf_plan\\nreturn add(a=2, b=3)\\n```"]),
                    default_validate_llm=ScriptedLLM([{"is_solved": True}]), tools=[add],
                    isolation="inprocess")
    result = brain.run("what is 2 + 3?")
    assert (result.status, result.final_result) == ("succeeded", 5), result
    print(sorted(name for name in NAMES if name in sys.modules))
    from dcbrain.chain import Chain
    chain = Chain(name="c", llm=ScriptedLLM(['{"n": 1,}']),
                  output_json_schema={"type": "object", "properties": {"n": {"type": "integer"}}})
    assert chain.run("q").content == {"n": 1}
    print(sorted(name for name in NAMES if name in sys.modules))
""")


def test_a_run_of_plain_tools_loads_no_library_it_does_not_use() -> None:
    code = f"NAMES = {ONLY_WHEN_NEEDED!r}\n{PROBE}"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert done.returncode == 0, done.stderr
    after_run, after_chain = done.stdout.splitlines()[-2:]
    assert after_run == "[]"
    # a schema given as JSON and a malformed reply: what they need is there when they come
    assert after_chain == "['json_repair', 'jsonschema', 're2']"
