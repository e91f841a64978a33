"""Plain values every layer passes on: JSON that leaves the process, text that can always be
shown, the scalar plan values (Decimal, dates) and Python types used as output types.

- :mod:`~dcbrain.values.jsonsafe`: any value as valid JSON data (``plain``, ``dumps``).
- :mod:`~dcbrain.values.text`: text without lone surrogates or terminal control sequences.
- :mod:`~dcbrain.values.scalars`: Decimal, date, datetime, time and timedelta in plans.
- :mod:`~dcbrain.values.typed`: a Python type's pydantic adapter, JSON Schema and errors.
"""
