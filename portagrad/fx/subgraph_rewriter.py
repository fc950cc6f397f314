"""``torch.fx.subgraph_rewriter.replace_pattern``: find every occurrence of a pattern (a
function or module, traced) in a graph module and put a replacement in its place."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from ..nn.modules.module import Module
from .graph import Graph
from .graph_module import GraphModule
from .node import Node, map_arg
from .tracer import Tracer

__all__ = ["Match", "replace_pattern"]


class Match(NamedTuple):
    """One replaced occurrence: the pattern's output node (``anchor``) and the graph node
    each pattern node matched (``nodes_map``)."""

    anchor: Node
    nodes_map: dict[Node, Node]


def _graph_of(p: Callable[..., Any] | GraphModule | Graph) -> Graph:
    if isinstance(p, Graph):
        return p
    if isinstance(p, GraphModule):
        return p.graph
    return Tracer().trace(p)


def _returned(g: Graph) -> list[Node]:
    out = [n for n in g.nodes if n.op == "output"]
    if len(out) != 1:
        raise ValueError("replace_pattern: the pattern must have exactly one output")
    val = out[0].args[0]
    vals = list(val) if isinstance(val, (tuple, list)) else [val]
    if not all(isinstance(v, Node) for v in vals):
        raise ValueError("replace_pattern: the pattern must return nodes, not constants")
    return vals


class _Matcher:
    def __init__(self) -> None:
        self.map: dict[Node, Node] = {}

    def node(self, pn: Node, gn: Node) -> bool:
        if pn in self.map:
            return self.map[pn] is gn
        if pn.op == "placeholder":
            # an input of the pattern matches any value, the same one at each use
            if gn in self.map.values():
                return False
            self.map[pn] = gn
            return True
        if pn.op != gn.op or not (pn.target == gn.target) or len(pn.args) != len(gn.args) \
                or set(pn.kwargs) != set(gn.kwargs):
            return False
        self.map[pn] = gn
        ok = self.arg(pn.args, gn.args) and all(self.arg(pn.kwargs[k], gn.kwargs[k])
                                                for k in pn.kwargs)
        if not ok:
            del self.map[pn]
        return ok

    def arg(self, pa: Any, ga: Any) -> bool:
        if isinstance(pa, Node):
            return isinstance(ga, Node) and self.node(pa, ga)
        if isinstance(pa, (tuple, list)):
            return type(pa) is type(ga) and len(pa) == len(ga) and \
                all(self.arg(a, b) for a, b in zip(pa, ga))
        if isinstance(pa, dict):
            return isinstance(ga, dict) and set(pa) == set(ga) and \
                all(self.arg(pa[k], ga[k]) for k in pa)
        return not isinstance(ga, Node) and type(pa) is type(ga) and pa == ga


def replace_pattern(gm: GraphModule, pattern: Callable[..., Any] | GraphModule | Graph,
                    replacement: Callable[..., Any] | GraphModule | Graph) -> list[Match]:
    """Replace each non-overlapping occurrence of ``pattern`` in ``gm``'s graph by
    ``replacement`` (both traced when given as functions or modules; the replacement takes the
    pattern's inputs, in order, and returns as many values). An occurrence whose inner values
    are also used outside it is left alone. ``gm`` is recompiled; returns the matches."""
    if isinstance(pattern, Module) and not isinstance(pattern, GraphModule):
        pattern = Tracer().trace(pattern)
    p_graph, r_graph = _graph_of(pattern), _graph_of(replacement)
    p_inputs = [n for n in p_graph.nodes if n.op == "placeholder"]
    r_inputs = [n for n in r_graph.nodes if n.op == "placeholder"]
    if len(p_inputs) != len(r_inputs):
        raise ValueError(f"replace_pattern: the pattern takes {len(p_inputs)} inputs and the "
                         f"replacement {len(r_inputs)}")
    p_outs = _returned(p_graph)
    graph = gm.graph
    used: set[Node] = set()
    matches: list[Match] = []
    for gn in list(graph.nodes):
        if gn._erased or gn in used:
            continue
        m = _Matcher()
        if not m.node(p_outs[-1], gn) or not all(
                pn in m.map or any(m.node(pn, c) for c in graph.nodes if c not in used)
                for pn in p_outs[:-1]):
            continue
        inner = {v for k, v in m.map.items() if k.op != "placeholder"}
        outs = {m.map[p] for p in p_outs}
        if inner & used or any(u not in inner for v in inner - outs for u in v.users):
            continue  # overlaps an earlier match, or an inner value escapes
        # the replacement goes just before the first node that uses a pattern output
        order = {n: i for i, n in enumerate(graph.nodes)}
        last = max(inner, key=lambda n: order[n])
        val_map: dict[Node, Any] = {r: m.map[p] for r, p in zip(r_inputs, p_inputs)}
        with graph.inserting_before(last.next):
            new_out = None
            for rn in r_graph.nodes:
                if rn.op == "placeholder":
                    continue
                if rn.op == "output":
                    new_out = map_arg(rn.args[0], val_map.__getitem__)
                    break
                val_map[rn] = graph.node_copy(rn, val_map.__getitem__)
        new_vals = list(new_out) if isinstance(new_out, (tuple, list)) else [new_out]
        if len(new_vals) != len(p_outs):
            raise ValueError("replace_pattern: the replacement returns "
                             f"{len(new_vals)} values and the pattern {len(p_outs)}")
        for p, new in zip(p_outs, new_vals):
            if not isinstance(new, Node):
                raise ValueError("replace_pattern: the replacement must return nodes")
            m.map[p].replace_all_uses_with(new)
        for n in sorted(inner, key=lambda n: order[n], reverse=True):
            graph.erase_node(n)
        used |= inner
        matches.append(Match(anchor=p_outs[-1], nodes_map=dict(m.map)))
    graph.lint()
    gm.recompile()
    return matches
