"""executors"""
