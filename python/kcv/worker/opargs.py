"""Reading an aten op's arguments by name (its schema), for the dispatch modes that inspect
calls: kcv.worker.maxnum's replacements and kcv.worker.reductions' lengths.

At the dispatch level an op's arguments arrive positionally or by keyword, with trailing
defaults often left out; bind() puts them all under their schema names, defaults filled in, so
an implementation reads `a["dim"]` whatever the caller wrote. op() looks an overload up by name
and gives None where this torch has none (a table of ops then simply lacks it).
"""

import torch

aten = torch.ops.aten


def op(name: str, overload: str = "default"):
    """aten.<name>.<overload>, or None where this torch lacks it."""
    packet = getattr(aten, name, None)
    return getattr(packet, overload, None) if packet is not None else None


def bind(func, args, kwargs) -> dict:
    """The op's arguments by schema name, defaults filled in."""
    out = {}
    for k, a in enumerate(func._schema.arguments):
        if k < len(args):
            out[a.name] = args[k]
        elif a.name in kwargs:
            out[a.name] = kwargs[a.name]
        elif a.has_default_value():
            out[a.name] = a.default_value
    return out
