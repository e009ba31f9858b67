"""inject"""
