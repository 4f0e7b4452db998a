"""The grading core: a notebook's code (extract), the box it runs in (sandbox, landlock, codec) and the child-side probe. Imports nothing of nbgrader or any LMS."""
