//! `IdMap`: the proxy's remapping of (connection, downstream id) to fresh upstream integer ids, over
//! `crate::correlation::IdRemap`. Ids are handed back as plain `int`/`str` values equal to those
//! given (subclass instances come back as their base type, as with the Python backend).

use pyo3::prelude::*;
use pyo3::types::PyTuple;

use super::{
    conn_arg, first_id_error, id_object, pending_error, request_id, table_options, IntOption,
};
use crate::correlation::{IdRemap, PendingError, RequestId};

/// (conn, downstream id) <-> upstream id, with a limit on live mappings.
#[pyclass(module = "mcpframe._core", name = "IdMap")]
pub(crate) struct PyIdMap {
    map: IdRemap<bool>,
}

impl PyIdMap {
    /// The map itself, for the native relay (`crate::python::relay`), which maps ids in place.
    pub(crate) fn remap(&mut self) -> &mut IdRemap<bool> {
        &mut self.map
    }

    /// Remove the mapping of `upstream_id`, returning `(conn, downstream id)` if there was one.
    fn take<'py>(
        &mut self,
        upstream_id: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let key = request_id(upstream_id)?;
        if !matches!(key, RequestId::Int(_)) {
            return Ok(None);
        }
        let py = upstream_id.py();
        match self.map.inbound(&key) {
            Some((conn, id, _)) => Ok(Some((conn, id_object(py, &id)?).into_pyobject(py)?)),
            None => Ok(None),
        }
    }
}

#[pymethods]
impl PyIdMap {
    #[new]
    #[pyo3(
        signature = (*, max_pending = IntOption::Default(65536), first_id = IntOption::Default(1)),
        text_signature = "(*, max_pending=65536, first_id=1)"
    )]
    fn new(max_pending: IntOption<'_>, first_id: IntOption<'_>) -> PyResult<Self> {
        let (limit, first) = table_options(&max_pending, &first_id)?;
        let map = IdRemap::new(limit, first).map_err(|_| first_id_error())?;
        Ok(PyIdMap { map })
    }

    /// The limit of live mappings.
    #[getter]
    fn max_pending(&self) -> usize {
        self.map.max_pending()
    }

    /// Map `(conn, id)` to a fresh upstream id and return it.
    #[pyo3(signature = (conn, id, /))]
    fn outbound(&mut self, conn: &Bound<'_, PyAny>, id: &Bound<'_, PyAny>) -> PyResult<i64> {
        let conn = conn_arg(conn)?;
        let key = request_id(id)?;
        match self.map.outbound(conn, key, false) {
            Ok(up) => Ok(up),
            Err(e) => Err(pending_error(id.py(), Some(&request_id(id)?), e)),
        }
    }

    /// Remove and return `(conn, downstream id)` for `upstream_id`; `UnknownIdError` if unmapped.
    #[pyo3(signature = (upstream_id, /))]
    fn inbound<'py>(&mut self, upstream_id: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyTuple>> {
        match self.take(upstream_id)? {
            Some(found) => Ok(found),
            None => {
                let key = request_id(upstream_id)?;
                Err(pending_error(
                    upstream_id.py(),
                    Some(&key),
                    PendingError::Unknown,
                ))
            }
        }
    }

    /// Remove and return `(conn, downstream id)` for `upstream_id`, or `None` if unmapped.
    #[pyo3(signature = (upstream_id, /))]
    fn discard<'py>(
        &mut self,
        upstream_id: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        self.take(upstream_id)
    }

    /// The upstream id of `(conn, id)`, or `None`.
    #[pyo3(signature = (conn, id, /))]
    fn upstream(&self, conn: &Bound<'_, PyAny>, id: &Bound<'_, PyAny>) -> PyResult<Option<i64>> {
        let conn = conn_arg(conn)?;
        Ok(self.map.upstream(conn, &request_id(id)?))
    }

    /// Mark the mapping of `upstream_id`: an `AnswerRelay` holds its answer for the proxy instead of
    /// relaying it. False if there is no such mapping.
    #[pyo3(signature = (upstream_id, /))]
    fn hold(&mut self, upstream_id: &Bound<'_, PyAny>) -> PyResult<bool> {
        let RequestId::Int(up) = request_id(upstream_id)? else {
            return Ok(false);
        };
        Ok(match self.map.data_mut(up) {
            Some(held) => {
                *held = true;
                true
            }
            None => false,
        })
    }

    /// `(upstream id, downstream id)` of each mapping of `conn`, by upstream id.
    #[pyo3(signature = (conn, /))]
    fn pending<'py>(&self, conn: &Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, PyTuple>>> {
        let py = conn.py();
        let conn = conn_arg(conn)?;
        self.map
            .pending(conn)
            .into_iter()
            .map(|(up, id)| (up, id_object(py, id)?).into_pyobject(py))
            .collect()
    }

    /// Forget every mapping of `conn`; return their upstream ids in mapping order.
    #[pyo3(signature = (conn, /))]
    fn drop_connection(&mut self, conn: &Bound<'_, PyAny>) -> PyResult<Vec<i64>> {
        Ok(self.map.drop_connection(conn_arg(conn)?))
    }

    fn __len__(&self) -> usize {
        self.map.len()
    }

    fn __repr__(&self) -> String {
        format!(
            "IdMap(pending={}, max_pending={})",
            self.map.len(),
            self.map.max_pending()
        )
    }
}
