//! The CPython type of `Message`, written by hand with the public C API (`PyType_FromSpec`) rather
//! than with `#[pyclass]`: a stream makes and drops messages by the thousand, and PyO3's generic
//! object life cycle (`object.__new__`, its initializer, the record moved several times, a
//! trampoline and a GIL-state look-up in the deallocator) cost about as much as validating a
//! message. Here a message is taken from a freelist, its record written in place, and released by
//! a deallocator that drops four references and puts the memory back on the list.
//!
//! Every entry point (getters, `with_id`, `__reduce__`, comparison, `repr`) runs its Rust code under
//! `catch_unwind`, so a panic becomes a Python exception instead of crossing the C boundary.

use std::ffi::{c_int, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::{self, addr_of, addr_of_mut};
use std::sync::atomic::{AtomicPtr, Ordering};

use pyo3::ffi;
use pyo3::panic::PanicException;
use pyo3::prelude::*;

use super::message::{Member, Record};

/// The memory of a `Message` object: the object header, then the record.
#[repr(C)]
struct MessageObject {
    header: ffi::PyObject,
    record: Record,
}

/// The type object, made once by [`register`] and kept for the life of the process.
static TYPE: AtomicPtr<ffi::PyTypeObject> = AtomicPtr::new(ptr::null_mut());

/// Dropped message objects (refcount 0, untracked, record released) waiting for reuse. Only the
/// GIL builds keep one: without a GIL, messages are made and dropped on several threads at once.
#[cfg(not(Py_GIL_DISABLED))]
mod spare {
    use std::cell::UnsafeCell;

    use pyo3::ffi;

    /// Dropped messages kept for reuse: a 64 KiB chunk of usual MCP lines holds a few hundred,
    /// and a chunk's messages are mostly dropped before the next chunk's are made.
    const SPARE_MESSAGES: usize = 1024;

    struct Spare(UnsafeCell<Vec<*mut ffi::PyObject>>);

    // SAFETY: the list is only touched by the allocator and the deallocator of `Message`, which
    // run with the GIL held (this module is compiled only for GIL builds), so never at once.
    unsafe impl Sync for Spare {}

    static SPARE: Spare = Spare(UnsafeCell::new(Vec::new()));

    /// A dropped message object to reuse, if one is kept.
    ///
    /// # Safety
    /// The GIL is held.
    pub(super) unsafe fn take() -> Option<*mut ffi::PyObject> {
        (*SPARE.0.get()).pop()
    }

    /// Keep `object` (dead, untracked, its record released) for reuse; whether it was kept
    /// (otherwise the caller frees it).
    ///
    /// # Safety
    /// The GIL is held.
    pub(super) unsafe fn keep(object: *mut ffi::PyObject) -> bool {
        let spare = &mut *SPARE.0.get();
        if spare.len() >= SPARE_MESSAGES {
            return false;
        }
        if spare.capacity() == 0 {
            spare.reserve_exact(SPARE_MESSAGES);
        }
        spare.push(object);
        true
    }
}

/// Free-threaded builds keep no dropped objects: each message is allocated and freed.
#[cfg(Py_GIL_DISABLED)]
mod spare {
    use pyo3::ffi;

    /// None is kept.
    ///
    /// # Safety
    /// None (kept `unsafe` to match the GIL build).
    pub(super) unsafe fn take() -> Option<*mut ffi::PyObject> {
        None
    }

    /// None is kept: the caller frees `_object`.
    ///
    /// # Safety
    /// None (kept `unsafe` to match the GIL build).
    pub(super) unsafe fn keep(_object: *mut ffi::PyObject) -> bool {
        false
    }
}

/// The record of a live message object.
///
/// SAFETY (callers): `object` is a live object of the `Message` type, its record written; the
/// reference lives no longer than the caller's borrow of the object.
unsafe fn record<'a>(object: *mut ffi::PyObject) -> &'a Record {
    &*addr_of!((*object.cast::<MessageObject>()).record)
}

/// Whether `object` is a `Message` (the type is final: no subclass exists).
pub(crate) fn is_message(object: *mut ffi::PyObject) -> bool {
    // SAFETY: reading the type of a live object.
    unsafe { ffi::Py_TYPE(object) == TYPE.load(Ordering::Relaxed) }
}

/// A new message object holding the record `make` returns; the garbage collector tracks it only
/// if it holds a payload value (its other references, `int`, `str`, `bytes`, cannot be part of a
/// cycle, and a lazy stream of tracked messages would make every collection walk all of them).
/// The record is made once the object's memory is at hand, so that it is written straight into
/// it: made first, it was kept across the allocation and then copied in (~20 instructions).
// inlined into the builder of the record, so that the record is written straight into the object
#[inline(always)]
pub(crate) fn new_object(
    py: Python<'_>,
    make: impl FnOnce() -> Record,
) -> PyResult<Bound<'_, PyAny>> {
    let tp = TYPE.load(Ordering::Relaxed);
    // SAFETY: the thread is attached (`py`; on GIL builds that guards the spare list); `tp` is
    // the registered type (a message exists only after `register`). A reused object is dead memory of that type:
    // `PyObject_Init` makes it a new reference again (and takes a reference to the heap type, as
    // a fresh allocation does); a fresh one comes from `PyType_GenericAlloc`, zeroed and tracked,
    // and is untracked before its record is written. The record is written once, in place,
    // without dropping the stale bytes of a reused object (already released by `dealloc`).
    unsafe {
        let object = match spare::take() {
            Some(object) => ffi::PyObject_Init(object, tp),
            None => {
                let object = ffi::PyType_GenericAlloc(tp, 0);
                if object.is_null() {
                    make().release(py);
                    return Err(PyErr::fetch(py));
                }
                ffi::PyObject_GC_UnTrack(object.cast());
                object
            }
        };
        let record = addr_of_mut!((*object.cast::<MessageObject>()).record);
        record.write(make());
        if (*record).holds_value() {
            ffi::PyObject_GC_Track(object.cast());
        }
        Ok(Bound::from_owned_ptr(py, object))
    }
}

unsafe extern "C" fn dealloc(object: *mut ffi::PyObject) {
    // SAFETY: CPython calls the deallocator on an attached thread (with the GIL held on GIL
    // builds), once, when the count reaches 0;
    // the record was written when the object was made. After it is read out, the memory is
    // either kept for reuse (untracked, its type reference given back) or freed.
    let tp = ffi::Py_TYPE(object);
    let record = addr_of_mut!((*object.cast::<MessageObject>()).record);
    // a message is tracked only once it holds a payload value (`new_object`, `get_payload`; a
    // fresh allocation is untracked before its record is written): one without (most lazy
    // messages) skips the call
    if (*record).holds_value() {
        ffi::PyObject_GC_UnTrack(object.cast());
    }
    Record::release_in_place(record, Python::assume_attached());
    if !spare::keep(object) {
        if let Some(free) = (*tp).tp_free {
            free(object.cast());
        }
    }
    ffi::Py_DECREF(tp.cast());
}

/// The payload value is the only reference that can lead back to a message (a user may store the
/// message in its params), so it is what the garbage collector must see; and the heap type.
unsafe extern "C" fn traverse(
    object: *mut ffi::PyObject,
    visit: ffi::visitproc,
    arg: *mut c_void,
) -> c_int {
    // SAFETY: the collector only walks tracked messages, whose records are written.
    if let Some(value) = record(object).value.get() {
        let done = visit(value.as_ptr(), arg);
        if done != 0 {
            return done;
        }
    }
    visit(ffi::Py_TYPE(object).cast(), arg)
}

/// Run `body` for a call from CPython: its value as a new reference, or NULL with the exception
/// set (a panic included).
fn call(body: impl FnOnce(Python<'_>) -> Member) -> *mut ffi::PyObject {
    // SAFETY: CPython calls the type's slots with the GIL held.
    let py = unsafe { Python::assume_attached() };
    let result = catch_unwind(AssertUnwindSafe(|| body(py)))
        .unwrap_or_else(|_| Err(PanicException::new_err("panic in mcpframe._core.Message")));
    match result {
        Ok(value) => value.into_ptr(),
        Err(err) => {
            err.restore(py);
            ptr::null_mut()
        }
    }
}

/// A member that only reads the record.
type Read = fn(&Record, Python<'_>) -> Member;

/// The getter of every plain member: `closure` is its [`Read`] function.
unsafe extern "C" fn get(object: *mut ffi::PyObject, closure: *mut c_void) -> *mut ffi::PyObject {
    // SAFETY: `closure` was made from a `Read` in `getters`; `object` is a live message.
    let read: Read = std::mem::transmute::<*mut c_void, Read>(closure);
    call(|py| read(record(object), py))
}

/// A payload member: builds the value of a lazy message on first access.
type Payload = fn(&Record, Python<'_>) -> PyResult<(Py<PyAny>, bool)>;

unsafe extern "C" fn get_payload(
    object: *mut ffi::PyObject,
    closure: *mut c_void,
) -> *mut ffi::PyObject {
    // SAFETY: `closure` was made from a `Payload` in `getters`; `object` is a live message.
    let read: Payload = std::mem::transmute::<*mut c_void, Payload>(closure);
    call(|py| {
        let (value, built) = read(record(object), py)?;
        // now that it holds a container, it could be part of a cycle
        if built && ffi::PyObject_GC_IsTracked(object) == 0 {
            ffi::PyObject_GC_Track(object.cast());
        }
        Ok(value)
    })
}

unsafe extern "C" fn with_id(
    object: *mut ffi::PyObject,
    new_id: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: a METH_O method gets its object and a borrowed argument, both live.
    call(|py| record(object).with_id(py, &Bound::from_borrowed_ptr(py, new_id)))
}

/// What pickling (or copying) a message raises, in both backends: without a `__reduce__`, pickle's
/// protocols 0 and 1 wrote a message that could not be loaded, and the others failed with no hint.
const NO_PICKLE: &str = "cannot pickle 'Message' object: pickle its raw bytes (message.raw) \
                         and decode them again";

unsafe extern "C" fn reduce(
    _object: *mut ffi::PyObject,
    _unused: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    call(|_py| Err(pyo3::exceptions::PyTypeError::new_err(NO_PICKLE)))
}

unsafe extern "C" fn richcompare(
    object: *mut ffi::PyObject,
    other: *mut ffi::PyObject,
    op: c_int,
) -> *mut ffi::PyObject {
    // SAFETY: both are live objects; `object` is a message (CPython calls the slot of the type
    // of its first argument), `other` is read as one only after its type is checked.
    call(|py| {
        if !is_message(object) || !is_message(other) || !matches!(op, ffi::Py_EQ | ffi::Py_NE) {
            return Ok(py.NotImplemented());
        }
        let equal = record(object).equals(py, record(other));
        Ok(pyo3::types::PyBool::new(py, equal == (op == ffi::Py_EQ))
            .to_owned()
            .into_any()
            .unbind())
    })
}

unsafe extern "C" fn repr(object: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: `object` is a live message.
    call(|py| record(object).repr(py))
}

/// A getset entry named `name` whose getter is `get` with `closure`.
fn entry(name: &'static CStr, get: ffi::getter, closure: *mut c_void) -> ffi::PyGetSetDef {
    ffi::PyGetSetDef {
        name: name.as_ptr(),
        get: Some(get),
        set: None,
        doc: ptr::null(),
        closure,
    }
}

/// The members, ended by an empty entry (the table must outlive the type: it is leaked).
fn getters() -> &'static mut [ffi::PyGetSetDef] {
    let plain: [(&CStr, Read); 11] = [
        (c"kind", Record::kind),
        (c"id", Record::id),
        (c"method", Record::method),
        (c"raw", Record::raw),
        (c"raw_id", Record::raw_id),
        (c"raw_params", Record::raw_params),
        (c"raw_result", Record::raw_result),
        (c"raw_error", Record::raw_error),
        (c"offset", Record::offset),
        (c"batch", Record::batch),
        (c"lazy", Record::lazy),
    ];
    let payloads: [(&CStr, Payload); 3] = [
        (c"params", Record::params),
        (c"result", Record::result),
        (c"error", Record::error),
    ];
    let mut table: Vec<ffi::PyGetSetDef> = plain
        .into_iter()
        .map(|(name, read)| entry(name, get, read as *mut c_void))
        .collect();
    table.extend(
        payloads
            .into_iter()
            .map(|(name, read)| entry(name, get_payload, read as *mut c_void)),
    );
    table.push(ffi::PyGetSetDef::default());
    Box::leak(table.into_boxed_slice())
}

/// The methods, ended by an empty entry (leaked, like the getters).
fn methods() -> &'static mut [ffi::PyMethodDef] {
    let with_id = ffi::PyMethodDef {
        ml_name: c"with_id".as_ptr(),
        ml_meth: ffi::PyMethodDefPointer { PyCFunction: with_id },
        ml_flags: ffi::METH_O,
        ml_doc: c"with_id($self, new_id, /)\n--\n\n`raw` with the top-level id value replaced by `new_id` (JSON-encoded).".as_ptr(),
    };
    let reduce = ffi::PyMethodDef {
        ml_name: c"__reduce__".as_ptr(),
        ml_meth: ffi::PyMethodDefPointer {
            PyCFunction: reduce,
        },
        ml_flags: ffi::METH_NOARGS,
        ml_doc: c"__reduce__($self, /)\n--\n\nRaises TypeError: a message cannot be pickled (pickle `raw`).".as_ptr(),
    };
    Box::leak(Box::new([with_id, reduce, ffi::PyMethodDef::zeroed()]))
}

/// Make the type (once per process) and add it to the module as `Message`.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let mut tp = TYPE.load(Ordering::Relaxed);
    if tp.is_null() {
        let slot = |slot: c_int, pfunc: *mut c_void| ffi::PyType_Slot { slot, pfunc };
        let mut slots = [
            slot(ffi::Py_tp_dealloc, dealloc as *mut c_void),
            slot(ffi::Py_tp_traverse, traverse as *mut c_void),
            slot(ffi::Py_tp_richcompare, richcompare as *mut c_void),
            slot(ffi::Py_tp_repr, repr as *mut c_void),
            slot(ffi::Py_tp_getset, getters().as_mut_ptr().cast()),
            slot(ffi::Py_tp_methods, methods().as_mut_ptr().cast()),
            slot(ffi::Py_tp_free, ffi::PyObject_GC_Del as *mut c_void),
            slot(
                ffi::Py_tp_doc,
                c"A valid message (see docs/core-contract.md).".as_ptr() as *mut c_void,
            ),
            slot(0, ptr::null_mut()),
        ];
        let flags = ffi::Py_TPFLAGS_DEFAULT
            | ffi::Py_TPFLAGS_HAVE_GC
            | ffi::Py_TPFLAGS_DISALLOW_INSTANTIATION
            | ffi::Py_TPFLAGS_IMMUTABLETYPE;
        let mut spec = ffi::PyType_Spec {
            name: c"mcpframe._core.Message".as_ptr(),
            basicsize: std::mem::size_of::<MessageObject>() as c_int,
            itemsize: 0,
            flags: flags as std::ffi::c_uint,
            slots: slots.as_mut_ptr(),
        };
        // SAFETY: the spec and its slots are valid for the call (CPython copies what it keeps,
        // and the getset and method tables it refers to are leaked); the result is a new
        // reference to the type, kept for good, or NULL with an exception set.
        let made = unsafe { ffi::PyType_FromSpec(&mut spec) };
        if made.is_null() {
            return Err(PyErr::fetch(py));
        }
        tp = made.cast();
        TYPE.store(tp, Ordering::Relaxed);
    }
    // SAFETY: `tp` is a live type object (the reference made above is never given back).
    let ty = unsafe { Bound::from_borrowed_ptr(py, tp.cast()) };
    m.add("Message", ty)
}
