//! Access to the exception classes of `mcpframe.errors` (pure Python), so that both backends raise
//! the very same classes.
