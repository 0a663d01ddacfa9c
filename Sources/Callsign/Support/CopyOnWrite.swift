/// A value kept in one heap box, copied only when it is changed while shared: a large value
/// held by many async frames, or passed down a long chain, costs one pointer.
struct CopyOnWrite<Value: Sendable>: Sendable {
    /// Safety: the box is written only through `value`'s modify accessor, which first copies it
    /// unless this wrapper holds the only reference. A shared box is never written, so sharing
    /// it across threads is as safe as sharing the immutable value it stands for.
    ///
    /// Its field is not checked for exclusive access at run time (two runtime calls per access,
    /// a few percent of a call's own CPU): every access goes through `value` below, whose
    /// accessors Swift checks statically on the wrapper, and a box is changed only while this
    /// wrapper alone holds it.
    private final class Box: @unchecked Sendable {
        @exclusivity(unchecked) var value: Value
        init(_ value: Value) { self.value = value }
    }

    private var box: Box

    init(_ value: Value) { box = Box(value) }

    var value: Value {
        _read { yield box.value }
        _modify {
            if !isKnownUniquelyReferenced(&box) { box = Box(box.value) }
            yield &box.value
        }
    }
}

/// A value type whose fields live in one `CopyOnWrite` box and are read and changed through
/// key-path member lookup: `request.path`, `error.code`. One mechanism for ``Request``,
/// ``Response`` and ``APIError``: each stays one pointer wide however much it carries, so passing
/// it down the middleware chain, or holding it in every frame of a waiting call, copies nothing.
public protocol BoxedFields {
    /// The fields, documented where they are declared.
    associatedtype Fields: Sendable
    /// All the fields at once.
    var fields: Fields { get set }
}

extension BoxedFields {
    /// Reads or changes one field.
    public subscript<Value>(dynamicMember field: WritableKeyPath<Fields, Value>) -> Value {
        get { fields[keyPath: field] }
        _modify { yield &fields[keyPath: field] }
    }

    /// Reads a field that only Callsign sets.
    public subscript<Value>(dynamicMember field: KeyPath<Fields, Value>) -> Value {
        fields[keyPath: field]
    }
}
