"""The commands: submit, batch (local and Ray backends), browse, reports."""
