//! Python bindings of the correlation tables: `Correlator` (pending outgoing requests) here and
//! `IdMap` (proxy id remapping) in `correlator/idmap.rs`, both over `crate::correlation`. The
//! exception messages (`DuplicateIdError`, `UnknownIdError`, `PendingLimitError`) follow the contract
//! and show the id as `id_text` writes it (the digits of an integer at any `int_max_str_digits`, the
//! `repr()` of a string). Integer arguments are read from Python
//! ints of any size, so an out-of-range option is the contract's `ValueError`, never an
//! `OverflowError` from the conversion.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt, PyList, PyString, PyTuple};
use pyo3::{PyTraverseError, PyVisit};

use super::errors::new_error;
use crate::correlation::{FirstIdOutOfRange, PendingError, PendingTable, RequestId};
use crate::digits::{self, MAX_INT_DIGITS};

pub(crate) mod idmap;

/// The key for an id argument: `int` (any size) or `str`, subclasses included; `bool` and other
/// types raise `TypeError`.
fn request_id(id: &Bound<'_, PyAny>) -> PyResult<RequestId> {
    if let Ok(text) = id.cast::<PyString>() {
        return Ok(RequestId::Str(text.to_str()?.into()));
    }
    if id.is_instance_of::<PyInt>() && !id.is_instance_of::<PyBool>() {
        return match id.extract::<i64>() {
            Ok(small) => Ok(RequestId::Int(small)),
            Err(_) => Ok(RequestId::from_bigint(id.extract()?)),
        };
    }
    let name = id.get_type().name()?;
    Err(PyTypeError::new_err(format!(
        "id must be an int or a str, not {name}"
    )))
}

/// An `int` argument (`bool` refused), as `i64`, or `None` when it lies outside the `i64` range.
fn int_arg(name: &str, value: &Bound<'_, PyAny>) -> PyResult<Option<i64>> {
    if !value.is_instance_of::<PyInt>() || value.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(format!("{name} must be an int")));
    }
    // An int that does not fit fails only with `OverflowError`: that is the `None` case.
    Ok(value.extract().ok())
}

/// A connection number: an `int` within the `i64` range (`ValueError` outside it, on both backends).
pub(crate) fn conn_arg(conn: &Bound<'_, PyAny>) -> PyResult<i64> {
    int_arg("conn", conn)?.ok_or_else(|| {
        PyValueError::new_err(format!(
            "conn must be between {} and {}",
            i64::MIN,
            i64::MAX
        ))
    })
}

/// A keyword option of the constructors: its default, or the object given (checked by the
/// methods below, so a wrong type is a `TypeError` and a value out of range a `ValueError`).
enum IntOption<'py> {
    Default(i64),
    Given(Bound<'py, PyAny>),
}

impl<'a, 'py> FromPyObject<'a, 'py> for IntOption<'py> {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Ok(IntOption::Given(obj.to_owned()))
    }
}

impl IntOption<'_> {
    /// `max_pending`: an int within `1..=i64::MAX` (the same range on both backends).
    fn max_pending(&self) -> PyResult<usize> {
        let value = match self {
            IntOption::Default(value) => Some(*value),
            IntOption::Given(obj) => int_arg("max_pending", obj)?,
        };
        match value {
            Some(limit) if limit >= 1 => Ok(usize::try_from(limit).unwrap_or(usize::MAX)),
            _ => Err(PyValueError::new_err(format!(
                "max_pending must be between 1 and {}",
                i64::MAX
            ))),
        }
    }

    /// `first_id`: an int; its range is checked by `PendingTable::new` (a value beyond `i64` is
    /// out of that range too).
    fn first_id(&self) -> PyResult<i64> {
        match self {
            IntOption::Default(value) => Ok(*value),
            IntOption::Given(obj) => int_arg("first_id", obj)?.ok_or_else(first_id_error),
        }
    }
}

/// The contract's `ValueError` for a `first_id` outside the counter's range.
fn first_id_error() -> PyErr {
    PyValueError::new_err(FirstIdOutOfRange.to_string())
}

/// `(max_pending, first_id)` from the constructor options, checked in that order (as the Python
/// backend checks them); `first_id`'s range is checked by the caller's table constructor.
fn table_options(max_pending: &IntOption<'_>, first_id: &IntOption<'_>) -> PyResult<(usize, i64)> {
    Ok((max_pending.max_pending()?, first_id.first_id()?))
}

/// A plain `int` or `str` equal to the id behind `key`.
fn id_object<'py>(py: Python<'py>, key: &RequestId) -> PyResult<Bound<'py, PyAny>> {
    Ok(match key {
        RequestId::Int(small) => small.into_pyobject(py)?.into_any(),
        RequestId::Big(big) => big.into_pyobject(py)?.into_any(),
        RequestId::Str(text) => PyString::new(py, text).into_any(),
    })
}

/// The id as an error message shows it: the `repr()` of a string, the digits of an integer (written
/// here, so that `sys.set_int_max_str_digits()` cannot make the message fail), and beyond
/// `MAX_INT_DIGITS` digits a name instead of the digits (such an id can be neither decoded nor encoded).
fn id_text(py: Python<'_>, key: &RequestId) -> PyResult<String> {
    Ok(match key {
        RequestId::Int(small) => small.to_string(),
        RequestId::Big(big) if digits::exceeds_limit(big) => {
            format!("<an integer of more than {MAX_INT_DIGITS} digits>")
        }
        RequestId::Big(big) => big.to_string(),
        RequestId::Str(_) => id_object(py, key)?.repr()?.to_string(),
    })
}

/// The exception for a failed table operation on `key`; messages show the id as `id_text` writes it.
#[cold]
fn pending_error(py: Python<'_>, key: Option<&RequestId>, error: PendingError) -> PyErr {
    let repr = || match key {
        Some(key) => id_text(py, key),
        None => Ok(String::new()),
    };
    let result: PyResult<PyErr> = match error {
        PendingError::Duplicate => repr().map(|r| {
            new_error(
                py,
                "DuplicateIdError",
                format!("request id {r} is already in flight"),
            )
        }),
        PendingError::Unknown => repr().map(|r| {
            new_error(
                py,
                "UnknownIdError",
                format!("no request in flight with id {r}"),
            )
        }),
        PendingError::Limit(limit) => Ok(new_error(
            py,
            "PendingLimitError",
            format!("too many requests in flight (limit {limit})"),
        )),
    };
    result.unwrap_or_else(|err| err)
}

/// Pending outgoing requests: id -> waiter, with monotonic id allocation and a limit.
#[pyclass(module = "mcpframe._core", name = "Correlator")]
pub(crate) struct PyCorrelator {
    table: PendingTable<Py<PyAny>>,
}

#[pymethods]
impl PyCorrelator {
    #[new]
    #[pyo3(
        signature = (*, max_pending = IntOption::Default(65536), first_id = IntOption::Default(1)),
        text_signature = "(*, max_pending=65536, first_id=1)"
    )]
    fn new(max_pending: IntOption<'_>, first_id: IntOption<'_>) -> PyResult<Self> {
        let (limit, first) = table_options(&max_pending, &first_id)?;
        let table = PendingTable::new(limit, first).map_err(|_| first_id_error())?;
        Ok(PyCorrelator { table })
    }

    /// The limit of requests in flight.
    #[getter]
    fn max_pending(&self) -> usize {
        self.table.max_pending()
    }

    /// The next integer id not in flight (counts up, skips busy ids, wraps from `2**63 - 1` to 1).
    fn next_id(&mut self) -> i64 {
        self.table.next_id()
    }

    /// `next_id()` and `register()` in one call; returns the id.
    #[pyo3(signature = (waiter, /))]
    fn allocate(&mut self, py: Python<'_>, waiter: Py<PyAny>) -> PyResult<i64> {
        self.table
            .allocate(waiter)
            .map_err(|e| pending_error(py, None, e))
    }

    /// Add `waiter` under `id`.
    #[pyo3(signature = (id, waiter, /))]
    fn register(&mut self, id: &Bound<'_, PyAny>, waiter: Py<PyAny>) -> PyResult<()> {
        let key = request_id(id)?;
        match self.table.register(key, waiter) {
            Ok(()) => Ok(()),
            Err(e) => Err(pending_error(id.py(), Some(&request_id(id)?), e)),
        }
    }

    /// Remove and return the waiter of `id`; `UnknownIdError` if none.
    #[pyo3(signature = (id, /))]
    fn resolve(&mut self, id: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let key = request_id(id)?;
        let found = self.table.remove(&key);
        found.ok_or_else(|| pending_error(id.py(), Some(&key), PendingError::Unknown))
    }

    /// Remove and return the waiter of `id`, or `default`.
    #[pyo3(signature = (id, default = None, /))]
    fn pop(&mut self, id: &Bound<'_, PyAny>, default: Option<Py<PyAny>>) -> PyResult<Py<PyAny>> {
        let key = request_id(id)?;
        Ok(self
            .table
            .remove(&key)
            .or(default)
            .unwrap_or_else(|| id.py().None()))
    }

    /// The waiter of `id` (left in place), or `default`.
    #[pyo3(signature = (id, default = None, /))]
    fn get(&self, id: &Bound<'_, PyAny>, default: Option<Py<PyAny>>) -> PyResult<Py<PyAny>> {
        let key = request_id(id)?;
        let found = self.table.get(&key).map(|w| w.clone_ref(id.py()));
        Ok(found.or(default).unwrap_or_else(|| id.py().None()))
    }

    /// Remove every entry; return `(id, waiter)` pairs in registration order.
    fn drain<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let pairs = self
            .table
            .drain()
            .into_iter()
            .map(|(key, waiter)| PyTuple::new(py, [id_object(py, &key)?, waiter.into_bound(py)]))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, pairs)
    }

    fn __len__(&self) -> usize {
        self.table.len()
    }

    /// Whether `id` is in flight (`TypeError` for anything but an int or a str, bools included).
    fn __contains__(&self, id: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.table.contains(&request_id(id)?))
    }

    fn __repr__(&self) -> String {
        format!(
            "Correlator(pending={}, max_pending={})",
            self.table.len(),
            self.table.max_pending()
        )
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        for waiter in self.table.waiters() {
            visit.call(waiter)?;
        }
        Ok(())
    }

    fn __clear__(&mut self) {
        drop(self.table.drain());
    }
}

/// Add `Correlator` and `IdMap` to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyCorrelator>()?;
    m.add_class::<idmap::PyIdMap>()?;
    Ok(())
}
