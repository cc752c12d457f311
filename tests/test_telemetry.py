import pytest

from accelbench.measure import telemetry


def test_energy_is_the_trapezoid_of_power_over_the_window():
    samples = [{"t": t, "power_w": p, "util_pct": 50.0, "memory_used_gb": 10.0 + t}
               for t, p in [(0.0, 100.0), (1.0, 300.0), (2.0, 300.0), (5.0, 999.0)]]
    row = telemetry.summarize(samples, 0.0, 2.0, output_tokens=100)
    # (100+300)/2*1 + (300+300)/2*1 = 500 J over 100 tokens; the sample at t=5 is outside the window
    assert row["energy_j"] == pytest.approx(500) and row["j_per_output_token"] == pytest.approx(5)
    # mean power is the energy over the interval's length (time-weighted), 500 J / 2 s
    assert row["power_mean_w"] == pytest.approx(250) and row["memory_used_max_gb"] == 12.0
    assert row["telemetry_samples"] == 3


def test_no_samples_means_absent_not_zero():
    row = telemetry.summarize([], 0.0, 1.0, output_tokens=10)
    assert row["power_mean_w"] is None and row["j_per_output_token"] is None and row["gpu_util_mean_pct"] is None


def test_samples_without_power_keep_utilization_and_memory():
    samples = [{"t": 0.0, "power_w": None, "util_pct": 40.0, "memory_used_gb": 3.0},
               {"t": 1.0, "power_w": None, "util_pct": 60.0, "memory_used_gb": 4.0}]
    row = telemetry.summarize(samples, 0.0, 1.0, output_tokens=10)
    assert row["power_mean_w"] is None and row["gpu_util_mean_pct"] == 50.0 and row["memory_used_max_gb"] == 4.0


def test_sampler_collects_in_the_background():
    import time
    s = telemetry.Sampler(lambda: {"power_w": 1.0, "util_pct": 0.0, "memory_used_gb": 0.0}, interval_s=0.01)
    s.start()
    time.sleep(0.1)
    s.stop()
    assert len(s.samples) >= 3 and all(x["power_w"] == 1.0 for x in s.samples)
