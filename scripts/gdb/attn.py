"""gdb printers for the library's Shape, Tensor and Var.

    gdb -x scripts/gdb/attn.py --args build/debug/examples/seq2seq --steps 2
    (gdb) print z                 Var(tensor(64×128, [[0.64952, ...]]), op=sigmoid)
    (gdb) print $shape(z)         "64×128"
    (gdb) print $at(z, 0, 5)      one element, by its index on each axis

They print what Shape::str(), Tensor::str() and Var::str() print, but read
the program's memory instead of calling those functions: gdb calls nothing
in the program. So they work in the optimised build too (where str() may
be inlined away), where gdb cannot call into the program at all (some
kernel and gdb pairs refuse: "Couldn't write extended state status: Bad
address"), and they never count as a change of a tensor that autograd has
saved (gdb calling the non-const data() would: docs/autograd.md).

The layout they read is the one in tensor/shape.hpp, tensor/tensor.hpp and
autograd/variable.hpp: a Tensor is a shared_ptr<Storage> (data_), an offset
into it and a Shape (dims_, rank_); a Var is a shared_ptr<Node> whose node
holds `value`, `requires_grad` and `op`. A change of those members must be
made here too; make check-debugging replays a page that prints through
these printers.
"""
import math

import gdb

EDGE = 3  # as Tensor::str(): the first and last 3 entries of a long axis


def _pointer(shared_ptr):
    """The raw pointer inside a std::shared_ptr (libstdc++ or libc++)."""
    for field in ("_M_ptr", "__ptr_"):
        try:
            return shared_ptr[field]
        except gdb.error:
            continue
    raise gdb.GdbError("attn printers: cannot read this std::shared_ptr (neither libstdc++ nor libc++)")


def _dims(shape):
    rank = int(shape["rank_"])
    if not 0 <= rank <= 8:
        raise gdb.GdbError(f"attn printers: a Shape of rank {rank}: not an initialised Shape")
    return [int(shape["dims_"][i]) for i in range(rank)]


def _shape_str(dims):
    return "×".join(str(d) for d in dims) if dims else "scalar"


def _number(x):
    """A real as C++'s ostream prints it at precision 5 (Tensor::str())."""
    return "%.5g" % x


def _elements(tensor):
    """(dims, a pointer to the first element), or None for an undefined tensor."""
    storage = _pointer(tensor["storage_"])
    if int(storage) == 0:
        return None
    return _dims(tensor["shape_"]), storage["data_"] + int(tensor["offset_"])


def _axis(data, dims, axis, offset):
    n, stride = dims[axis], math.prod(dims[axis + 1:])
    last = axis + 1 == len(dims)
    parts = []
    i = 0
    while i < n:
        if n > 2 * EDGE + 1 and i == EDGE:
            parts.append("...")
            i = n - EDGE
            continue
        parts.append(_number(float(data[offset + i])) if last else _axis(data, dims, axis + 1, offset + i * stride))
        i += 1
    separator = ", " if last else ",\n" + " " * (axis + 8)
    return "[" + separator.join(parts) + "]"


def tensor_str(tensor):
    elements = _elements(tensor)
    if elements is None:
        return "tensor(undefined)"
    dims, data = elements
    body = _number(float(data[0])) if not dims else _axis(data, dims, 0, 0)
    return f"tensor({_shape_str(dims)}, {body})"


def _node_field(node, name):
    """A member of the Node that `node` points to, read at its offset.

    Not node.dereference()[name]: the node is an OpNode<lambda> (a class
    with a vtable), and gdb, reaching through the pointer, looks up that
    dynamic type, whose lambda has no RTTI symbol, and warns on every print.
    """
    for field in node.type.target().strip_typedefs().fields():
        if field.name == name:
            return gdb.Value(int(node) + field.bitpos // 8).cast(field.type.pointer()).dereference()
    raise gdb.GdbError(f"attn printers: attn::Node has no member {name}: update scripts/gdb/attn.py")


def _node(var):
    """The Node* of a Var, or None for an undefined one."""
    node = _pointer(var["node_"])
    return None if int(node) == 0 else node


def var_str(var):
    node = _node(var)
    if node is None:
        return "Var(undefined)"
    text = "Var(" + tensor_str(_node_field(node, "value"))
    if bool(_node_field(node, "requires_grad")):
        text += ", requires_grad"
    op = _node_field(node, "op")
    if int(op) != 0:
        text += ", op=" + op.string()
    return text + ")"


class _Printer:
    def __init__(self, value, render):
        self.value, self.render = value, render

    def to_string(self):
        return self.render(self.value)


_RENDER = {
    "attn::Shape": lambda v: _shape_str(_dims(v)),
    "attn::Tensor": tensor_str,
    "attn::Var": var_str,
}


def _lookup(value):
    kind = value.type.strip_typedefs()
    if kind.code == gdb.TYPE_CODE_REF or kind.code == gdb.TYPE_CODE_RVALUE_REF:
        return None  # gdb dereferences a reference and asks again
    render = _RENDER.get(str(kind.unqualified()))
    return _Printer(value, render) if render else None


def _tensor_of(value):
    """The Tensor a Tensor or Var value holds (references followed)."""
    if value.type.strip_typedefs().code in (gdb.TYPE_CODE_REF, gdb.TYPE_CODE_RVALUE_REF):
        value = value.referenced_value()
    name = str(value.type.strip_typedefs().unqualified())
    if name == "attn::Var":
        node = _node(value)
        if node is None:
            raise gdb.GdbError("an undefined Var holds no tensor")
        return _node_field(node, "value")
    if name == "attn::Tensor":
        return value
    raise gdb.GdbError(f"not a Tensor or a Var: {name}")


class _ShapeFunction(gdb.Function):
    """$shape(t): the shape of a Tensor or Var, as Shape::str() writes it."""

    def __init__(self):
        super().__init__("shape")

    def invoke(self, value):
        return _shape_str(_dims(_tensor_of(value)["shape_"]))


class _AtFunction(gdb.Function):
    """$at(t, i, j, ...): one element of a Tensor or Var, by its index on each axis."""

    def __init__(self):
        super().__init__("at")

    def invoke(self, value, *index):
        elements = _elements(_tensor_of(value))
        if elements is None:
            raise gdb.GdbError("$at: the tensor is undefined")
        dims, data = elements
        index = [int(i) for i in index]
        if len(index) != len(dims):
            raise gdb.GdbError(f"$at: {len(index)} indices for a tensor of shape {_shape_str(dims)}")
        flat = 0
        for axis, (i, n) in enumerate(zip(index, dims)):
            if not 0 <= i < n:
                raise gdb.GdbError(f"$at: index {i} out of range on axis {axis} of shape {_shape_str(dims)}")
            flat = flat * n + i
        return data[flat]


gdb.pretty_printers.append(_lookup)
_ShapeFunction()
_AtFunction()
