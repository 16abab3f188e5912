//! `IdMap`: the proxy's remapping of (connection, downstream id) to fresh upstream integer ids, over
//! `crate::correlation::IdRemap`. The downstream id object is kept so `inbound` returns it as given.

use pyo3::prelude::*;
use pyo3::types::PyTuple;
use pyo3::{PyTraverseError, PyVisit};

use super::{pending_error, request_id};
use crate::correlation::{IdRemap, PendingError, RequestId};

/// (conn, downstream id) <-> upstream id, with a limit on live mappings.
#[pyclass(module = "mcpframe._core", name = "IdMap")]
pub(crate) struct PyIdMap {
    map: IdRemap<Py<PyAny>>,
}

impl PyIdMap {
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
            Some((conn, _, id)) => Ok(Some((conn, id).into_pyobject(py)?)),
            None => Ok(None),
        }
    }
}

#[pymethods]
impl PyIdMap {
    #[new]
    #[pyo3(signature = (*, max_pending = 65536, first_id = 1))]
    fn new(max_pending: usize, first_id: i64) -> Self {
        PyIdMap {
            map: IdRemap::new(max_pending, first_id),
        }
    }

    /// The limit of live mappings.
    #[getter]
    fn max_pending(&self) -> usize {
        self.map.max_pending()
    }

    /// Map `(conn, id)` to a fresh upstream id and return it.
    fn outbound(&mut self, conn: i64, id: &Bound<'_, PyAny>) -> PyResult<i64> {
        let key = request_id(id)?;
        self.map
            .outbound(conn, key, id.clone().unbind())
            .map_err(|e| pending_error(Some(id), e, id.py()))
    }

    /// Remove and return `(conn, downstream id)` for `upstream_id`; `UnknownIdError` if unmapped.
    fn inbound<'py>(&mut self, upstream_id: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyTuple>> {
        self.take(upstream_id)?.ok_or_else(|| {
            pending_error(Some(upstream_id), PendingError::Unknown, upstream_id.py())
        })
    }

    /// Remove and return `(conn, downstream id)` for `upstream_id`, or `None` if unmapped.
    fn discard<'py>(
        &mut self,
        upstream_id: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        self.take(upstream_id)
    }

    /// The upstream id of `(conn, id)`, or `None`.
    fn upstream(&self, conn: i64, id: &Bound<'_, PyAny>) -> PyResult<Option<i64>> {
        Ok(self.map.upstream(conn, &request_id(id)?))
    }

    /// Forget every mapping of `conn`; return their upstream ids in allocation order.
    fn drop_connection(&mut self, conn: i64) -> Vec<i64> {
        self.map.drop_connection(conn)
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

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        for id in self.map.data() {
            visit.call(id)?;
        }
        Ok(())
    }

    fn __clear__(&mut self) {
        self.map.clear();
    }
}
