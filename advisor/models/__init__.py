"""advisor.models"""
