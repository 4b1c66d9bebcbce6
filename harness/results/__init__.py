"""Results of evaluations: the versioned document, the database, the ranking."""
