import syncgate_suite_module_that_does_not_exist  # noqa: F401


def test_never_collected():
    pass
