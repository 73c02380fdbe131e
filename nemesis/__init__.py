"""Faults as plain operations (partitions, pauses, kills, link toxics) and schedules of them."""
