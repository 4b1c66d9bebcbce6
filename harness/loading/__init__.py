"""Loading a task folder and a submission: files, cases, directives, the static screen."""
