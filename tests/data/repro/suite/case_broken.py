class TestAlways:
    def test_broken(self):
        assert 1 + 1 == 3, "arithmetic is broken"
