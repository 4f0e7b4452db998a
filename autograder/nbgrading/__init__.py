"""nbgrader integration: autograde through the hidden suites, the class run on every core, the gradebook, the release."""
